x :: A; x :: B;
[1] y -> z [70000];
/* open
