in0 :: FromDevice(eth0);  in1 :: FromDevice(eth1);
out0 :: ToDevice(eth0);   out1 :: ToDevice(eth1);
c0 :: Classifier(arp, ip6 20/3a 54/87, ip6 20/3a 54/88, ip, ip6, -);
rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1, IP6 2001:db8:1::1);
rt6 :: Ip6Lookup(ROUTE 2001:db8:1::1/128 2, ROUTE 2001:db8:2::1/128 2,
                 ROUTE 2001:db8:99::/48 2001:db8:2::2 1, NOROUTE 3);
in0 -> c0; c0 [4] -> Strip(14) -> rt6;
rt6 [0] -> hl0 :: DecIp6HopLimit(SRC 2001:db8:1::1 2001:db8:2::1) -> rw0 -> out0;
hl0 [1] -> rt6;
rt6 [2] -> IcmpEcho(ADDR 2001:db8:1::1, ADDR 2001:db8:2::1) -> rt6;
# hash comment
c0[5]->Discard(); /* block
comment */ a/b :: Queue(f(1, 2), 3);
