// Lookups: the live FIB, one output per interface.
rt4 :: Ip4Lookup(TABLE fib4, PORTS 2);
rt6 :: Ip6Lookup(TABLE fib6, PORTS 2);
mine :: Discard;
// IPv4 for the router: echo replies go back through the lookup; own
// addresses, link-local multicast and broadcast end in `mine`; the rest
// has its TTL decremented (ICMP time exceeded back through the lookup).
// (A name is declared before it is used: an undeclared word is a class.)
local4 :: Classifier(30/c6120101, 30/c6120201, 30/e00000, 30/ffffffff, -);
local4 [0] -> mine; local4 [1] -> mine; local4 [2] -> mine; local4 [3] -> mine;
local4 [4] -> ttl4 :: DecIpTtl(SRC 198.18.1.1 198.18.2.1);
ttl4 [0] -> rt4; ttl4 [1] -> rt4;
head4 :: IcmpEcho(ADDR 198.18.1.1, ADDR 198.18.2.1);
head4 [0] -> rt4; head4 [1] -> local4;
// The same for IPv6.
local6 :: Classifier(38/20010db800010000 46/0000000000000001, 38/20010db800020000 46/0000000000000001, 38/ff, -);
local6 [0] -> mine; local6 [1] -> mine; local6 [2] -> mine;
local6 [3] -> ttl6 :: DecIp6HopLimit(SRC 2001:db8:1::1 2001:db8:2::1);
ttl6 [0] -> rt6; ttl6 [1] -> rt6;
head6 :: IcmpEcho(ADDR 2001:db8:1::1, ADDR 2001:db8:2::1);
head6 [0] -> rt6; head6 [1] -> local6;
// Interface 0 (eth0).
in0 :: FromDevice(eth0);
c0 :: Classifier(arp, ip6 icmp6 54/87, ip6 icmp6 54/88, ip, ip6);
rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 198.18.1.1, IP6 2001:db8:1::1);
in0 -> c0; c0 [0] -> [1] rw0; c0 [1] -> [1] rw0; c0 [2] -> [1] rw0;
c0 [3] -> CheckIpHeader -> head4; c0 [4] -> CheckIp6Header -> head6;
rt4 [0] -> rw0; rt6 [0] -> rw0; rw0 -> ToDevice(eth0);
// Interface 1 (eth1), with the filter and the counter.
in1 :: FromDevice(eth1);
c1 :: Classifier(arp, ip6 icmp6 54/87, ip6 icmp6 54/88, ip, ip6);
rw1 :: EtherRewrite(MAC 02:00:00:00:00:02, IP 198.18.2.1, IP6 2001:db8:2::1);
in1 -> c1; c1 [0] -> [1] rw1; c1 [1] -> [1] rw1; c1 [2] -> [1] rw1;
c1 [3] -> CheckIpHeader -> head4; c1 [4] -> CheckIp6Header -> head6;
rt4 [1] -> deny :: Classifier(30/c61372, -);
deny [0] -> denied :: Discard;
deny [1] -> cnt :: Counter -> rw1;
rt6 [1] -> rw1; rw1 -> ToDevice(eth1);
