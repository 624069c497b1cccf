// comments: // to end of line, or /* ... */
src :: FromDevice(eth0);
c   :: Classifier(12/0800, -);
src -> c;
c [1] -> Discard;
c [0] -> CheckIpHeader -> [0] rt :: Ip4Lookup(ROUTE 0.0.0.0/0 0);
