#!/usr/bin/python3
"""Cross-implementation ESP vectors from Scapy's ESP (scapy.layers.ipsec,
Debian python3-scapy 2.5.0, AES-GCM with a 16-byte ICV over the
`cryptography` package): an implementation independent of ours.

Writes scapy.txt: one vector per line,
  name spi seq key_and_salt_hex inner_hex esp_packet_hex
where esp_packet is the whole outer IPv4 packet Scapy built in tunnel
mode. `tests/scapy_vectors.rs` checks that crate ipsec opens each one to
`inner` and, for the ones Scapy sealed with IV = the sequence number (as
we do), that our seal gives the same bytes.

Run: /usr/bin/python3 crates/ipsec/tests/vectors/gen_scapy.py
"""
import os
import sys

from scapy.layers.inet import IP, UDP, ICMP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation

KEY = bytes(range(16)) + bytes([0xca, 0xfe, 0xba, 0xbe])
SRC, DST = "198.18.2.1", "198.18.2.2"


def sa(spi):
    return SecurityAssociation(
        ESP,
        spi=spi,
        crypt_algo="AES-GCM",
        crypt_key=KEY,
        tunnel_header=IP(src=SRC, dst=DST, id=0, ttl=64, flags=0, tos=0),
    )


def vector(name, spi, seq, inner, iv):
    p = sa(spi).encrypt(inner, seq_num=seq, iv=iv)
    p = IP(bytes(p))  # checksums and lengths filled
    return f"{name} {spi} {seq} {KEY.hex()} {bytes(inner).hex()} {bytes(p).hex()}"


def main():
    out = []
    v4 = IP(src="198.18.1.2", dst="198.18.3.1", ttl=63, id=7) / UDP(sport=1000, dport=5001) / b"tessera esp"
    out.append(vector("udp4_seq_iv", 0x1001, 1, v4, (1).to_bytes(8, "big")))
    ping = IP(src="198.18.1.2", dst="198.18.3.1", ttl=63, id=9) / ICMP(id=1, seq=1) / (b"x" * 56)
    out.append(vector("icmp4_seq_iv", 0x1001, 2, ping, (2).to_bytes(8, "big")))
    v6 = IPv6(src="2001:db8:1::2", dst="2001:db8:3::1", hlim=63) / UDP(sport=1, dport=2) / b"six"
    out.append(vector("udp6_seq_iv", 0x1001, 3, v6, (3).to_bytes(8, "big")))
    # A random IV (as Scapy does by default): we can only open these.
    for n in range(1, 4):
        inner = IP(src="198.18.1.2", dst="198.18.3.1", ttl=63, id=n) / UDP(sport=n, dport=9) / (b"r" * n * 7)
        out.append(vector(f"random_iv_{n}", 0x2002, 100 + n, inner, os.urandom(8)))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scapy.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {len(out)} vectors to {path}", file=sys.stderr)


main()
