#!/usr/bin/python3
"""The far tunnel end of `tests/ipsec_interop.rs`, built on Scapy's ESP
(scapy.layers.ipsec, AES-GCM over the `cryptography` package): an ESP
implementation independent of ours.

It sniffs interface IFACE; every ESP packet from 198.18.2.1 is opened with
the SA (SPI 0x1001, KEY_IN); the inner UDP datagram is answered with
"echo:" + its payload, sealed with the SA (SPI 0x2001, KEY_OUT, random IV)
toward 198.18.2.1, and sent back. A packet for the protected network
198.18.3.0/24 seen in the clear is counted (`clear`). Stops after WANT
distinct answered datagrams or SECS seconds; prints `ready` when sniffing, one line per
opened packet. Then it sends three packets R must drop, for its per-SA
counters: its first answer again (a replay, RFC 4303 Sec. 3.4.3), a new
answer with one ciphertext bit flipped (an ICV failure), and one sealed
with an SPI R does not know (0x2999); and prints a final
`peer esp=N opened=N clear=N sent=N failed=N bad=N`.

usage: peer.py IFACE WANT SECS KEY_IN_HEX KEY_OUT_HEX   (keys: key + salt)
"""
import sys

from scapy.all import Ether, IP, UDP, get_if_hwaddr, sendp, sniff
from scapy.layers.ipsec import ESP, SecurityAssociation

iface, want, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
key_in, key_out = bytes.fromhex(sys.argv[4]), bytes.fromhex(sys.argv[5])
sa_in = SecurityAssociation(
    ESP, spi=0x1001, crypt_algo="AES-GCM", crypt_key=key_in,
    tunnel_header=IP(src="198.18.2.1", dst="198.18.2.2"),
)
sa_out = SecurityAssociation(
    ESP, spi=0x2001, crypt_algo="AES-GCM", crypt_key=key_out,
    tunnel_header=IP(src="198.18.2.2", dst="198.18.2.1", ttl=64),
)
me = get_if_hwaddr(iface)
stats = {"esp": 0, "opened": 0, "clear": 0, "sent": 0, "failed": 0, "bad": 0}
# The first sealed answer (kept to replay it) and R's MAC.
first = {}


def handle(p):
    if IP not in p:
        return
    ip = p[IP]
    if ip.dst.startswith("198.18.3."):
        stats["clear"] += 1
        return
    if ip.proto != 50 or ip.src != "198.18.2.1":
        return
    stats["esp"] += 1
    try:
        inner = sa_in.decrypt(IP(bytes(ip)))
    except Exception as e:  # an ICV failure or bad padding: report it
        stats["failed"] += 1
        print(f"open failed: {e!r}", flush=True)
        return
    stats["opened"] += 1
    if UDP not in inner:
        print(f"opened non-UDP: {inner.summary()}", flush=True)
        return
    u = inner[UDP]
    data = bytes(u.payload)
    print(f"opened spi={ip[ESP].spi:#x} seq={ip[ESP].seq} {inner.src}->{inner.dst} ttl={inner.ttl} {data!r}", flush=True)
    reply = IP(src=inner.dst, dst=inner.src, ttl=64) / UDP(sport=u.dport, dport=u.sport) / (b"echo:" + data)
    frame = Ether(dst=p[Ether].src, src=me) / sa_out.encrypt(reply)
    sendp(frame, iface=iface, verbose=False)
    first.setdefault("frame", frame)
    first.setdefault("reply", reply)
    stats["sent"] += 1
    answered.add(data)


# The distinct datagrams answered: a resent one (its first answer came
# late) is answered again but counts once toward WANT.
answered = set()
sniff(
    iface=iface,
    prn=handle,
    store=False,
    timeout=secs,
    stop_filter=lambda _: len(answered) >= want,
    started_callback=lambda: print("ready", flush=True),
)
if "frame" in first:
    f, reply = first["frame"], first["reply"]
    # A replay: the same sequence number again.
    sendp(f, iface=iface, verbose=False)
    # A forged packet: a fresh sequence number, one bit of the ciphertext
    # (before the 16-byte ICV) flipped.
    forged = bytearray(bytes(Ether(dst=f[Ether].dst, src=me) / sa_out.encrypt(reply)))
    forged[-20] ^= 0x80
    sendp(Ether(bytes(forged)), iface=iface, verbose=False)
    # An SPI R has no SA for.
    sa_x = SecurityAssociation(
        ESP, spi=0x2999, crypt_algo="AES-GCM", crypt_key=key_out,
        tunnel_header=IP(src="198.18.2.2", dst="198.18.2.1", ttl=64),
    )
    sendp(Ether(dst=f[Ether].dst, src=me) / sa_x.encrypt(reply), iface=iface, verbose=False)
    stats["bad"] = 3

print("peer " + " ".join(f"{k}={v}" for k, v in stats.items()), flush=True)
