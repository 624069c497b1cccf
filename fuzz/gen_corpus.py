#!/usr/bin/env python3
"""Seed corpora for the Tessera fuzz targets, cut from the shared real MRT
files (../shared/data/mrt relative to the repository root) plus a few
hand-built messages of the kinds that update dumps rarely hold (OPEN,
NOTIFICATION, ROUTE-REFRESH).

This parser is independent of the Rust crates on purpose: it only needs the
MRT common header (RFC 6396 §2), the BGP4MP layout (RFC 6396 §4.4, RFC 8050
§3 for ADD-PATH subtypes) and the UPDATE layout (RFC 4271 §4.3).

Input formats (they must match fuzz/fuzz_targets/*.rs):
  bgp_message        one BGP message, header included
  bgp_attributes     ctx byte (bit0 4-octet AS, bit1 ADD-PATH), then the
                     path attribute list of an UPDATE
  bgp_attr_single    ctx byte, type code byte, flags byte, then the value
  bgp_nlri           AFI selector byte (bit0: 0 IPv4, 1 IPv6), then NLRI
  bgp_nlri_addpath   same, NLRI with 4-octet path identifiers (RFC 7911)
  mrt_records        a run of 1..4 consecutive raw MRT records
  mrt_dump           the same seeds, for the bgpdump text/JSON formatter
  replay_mrt_input   runs of 4 raw MRT records (an MRT file), for the
                     `tessera replay --mrt` reader
  decode_update      ctx byte (bit0 4-octet AS, bit1 eBGP, bit2 extended
                     messages, bits 4-7 ADD-PATH per family), then an
                     UPDATE body (the message after its 19-byte header)

Usage: gen_corpus.py DATA_DIR CORPUS_DIR [MAX_RECORDS_PER_FILE]
"""
import bz2
import gzip
import hashlib
import os
import struct
import sys

UPDATE_FILES = [
    "updates.20190101.0000.gz",
    "updates.20160811.1600.gz",
    "update.bz2",
    "routeviews.route-views.jinx.updates.1401493500.bz2",
    "updates.et-header.2015.gz",
]
RIB_FILES = [
    "bview.ipv4_unicast_add_path.gz",
    "bview.ipv6_unicast_add_path.gz",
    "bview.20020722.2337.gz",
    "rib.20140523.0600_firstMB.bz2",
    "rib6.20151101.0600_firstMB.bz2",
]
# Per-target cap on seeds; libFuzzer merges by coverage anyway, the cap only
# keeps start-up time small in CI.
CAP = 400
PER_SIGNATURE = 3


def open_any(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


def records(path, limit):
    """Yields (type, subtype, header+body bytes, body-after-ET-µs) per record.
    Stops quietly at a truncated record or stream (the _firstMB files)."""
    n = 0
    with open_any(path) as f:
        while n < limit:
            try:
                hdr = f.read(12)
            except (EOFError, OSError):
                return
            if len(hdr) < 12:
                return
            _ts, typ, sub, length = struct.unpack(">IHHI", hdr)
            try:
                body = f.read(length)
            except (EOFError, OSError):
                return
            if len(body) < length:
                return
            # *_ET types carry a 4-octet microsecond field counted in length.
            payload = body[4:] if typ in (17, 33, 49) else body
            yield typ, sub, hdr + body, payload
            n += 1


def bgp4mp_message(sub, payload):
    """Returns (bgp message bytes, as4, addpath) or None (RFC 6396 §4.4)."""
    if sub not in (1, 4, 6, 7, 8, 9, 10, 11):
        return None
    as4 = sub in (4, 7, 9, 11)
    addpath = sub >= 8
    off = 8 if as4 else 4
    if len(payload) < off + 4:
        return None
    (afi,) = struct.unpack(">H", payload[off + 2 : off + 4])
    alen = {1: 4, 2: 16}.get(afi)
    if alen is None:
        return None
    off += 4 + 2 * alen
    return payload[off:], as4, addpath


def split_update(msg):
    """(withdrawn, attrs, nlri) of an UPDATE, or None (RFC 4271 §4.3)."""
    if len(msg) < 23 or msg[18] != 2:
        return None
    (wl,) = struct.unpack(">H", msg[19:21])
    w_end = 21 + wl
    if w_end + 2 > len(msg):
        return None
    (al,) = struct.unpack(">H", msg[w_end : w_end + 2])
    a_end = w_end + 2 + al
    if a_end > len(msg):
        return None
    return msg[21:w_end], msg[w_end + 2 : a_end], msg[a_end:]


def attributes(attrs):
    """Yields (flags, type, value) for each attribute (RFC 4271 §4.3)."""
    off = 0
    while off + 3 <= len(attrs):
        flags, typ = attrs[off], attrs[off + 1]
        if flags & 0x10:
            if off + 4 > len(attrs):
                return
            (ln,) = struct.unpack(">H", attrs[off + 2 : off + 4])
            off += 4
        else:
            ln = attrs[off + 2]
            off += 3
        if off + ln > len(attrs):
            return
        yield flags, typ, attrs[off : off + ln]
        off += ln


def mp_nlri(value, reach):
    """(afi, nlri) from an MP_REACH (RFC 4760 §3) or MP_UNREACH (§4) value."""
    if len(value) < 3:
        return None
    (afi,) = struct.unpack(">H", value[0:2])
    if not reach:
        return afi, value[3:]
    if len(value) < 4:
        return None
    nh_end = 4 + value[3] + 1  # + reserved octet
    if nh_end > len(value):
        return None
    return afi, value[nh_end:]


def add_path_ids(nlri, start_id):
    """Re-writes plain NLRI with a 4-octet path identifier before each prefix
    (RFC 7911 §3). Returns None when the NLRI does not parse."""
    out = bytearray()
    off = 0
    pid = start_id
    while off < len(nlri):
        ln = nlri[off]
        n = (ln + 7) // 8
        if off + 1 + n > len(nlri):
            return None
        out += struct.pack(">I", pid) + nlri[off : off + 1 + n]
        pid += 1
        off += 1 + n
    return bytes(out)


class Corpus:
    def __init__(self, root):
        self.root = root
        self.count = {}
        self.sig = {}

    def add(self, target, data, signature=None):
        if not data or self.count.get(target, 0) >= CAP:
            return
        if signature is not None:
            key = (target, signature)
            if self.sig.get(key, 0) >= PER_SIGNATURE:
                return
            self.sig[key] = self.sig.get(key, 0) + 1
        d = os.path.join(self.root, target)
        os.makedirs(d, exist_ok=True)
        name = hashlib.sha1(data).hexdigest()
        p = os.path.join(d, name)
        # Counted even when already there, so re-runs do not grow the seeds.
        self.count[target] = self.count.get(target, 0) + 1
        if not os.path.exists(p):
            with open(p, "wb") as f:
                f.write(data)


def bgp(typ, body):
    """A BGP message: 16-octet marker, length, type (RFC 4271 §4.1)."""
    return b"\xff" * 16 + struct.pack(">HB", 19 + len(body), typ) + body


def handmade(c):
    caps = (
        b"\x01\x04\x00\x01\x00\x01"  # multiprotocol IPv4 unicast (RFC 4760)
        + b"\x01\x04\x00\x02\x00\x01"  # multiprotocol IPv6 unicast
        + b"\x02\x00"  # route refresh (RFC 2918)
        + b"\x46\x00"  # enhanced route refresh (RFC 7313)
        + b"\x40\x02\x80\x78"  # graceful restart (RFC 4724)
        + b"\x41\x04\x00\x01\x00\x00"  # 4-octet AS 65536 (RFC 6793)
        + b"\x45\x08\x00\x01\x01\x03\x00\x02\x01\x03"  # ADD-PATH (RFC 7911)
        + b"\x05\x06\x00\x01\x00\x01\x00\x02"  # extended next hop (RFC 8950)
        + b"\x06\x00"  # extended message (RFC 8654)
        + b"\x49\x05\x03r1\x00\x00"  # FQDN (draft-ietf-idr-dynamic-cap)
    )
    params = b"\x02" + bytes([len(caps)]) + caps
    c.add("bgp_message", bgp(1, b"\x04\x5b\xa0\x00\xb4\xc0\x00\x02\x01" + bytes([len(params)]) + params))
    c.add("bgp_message", bgp(4, b""))
    text = b"maintenance"
    c.add("bgp_message", bgp(3, b"\x06\x02" + bytes([len(text)]) + text))  # RFC 9003
    c.add("bgp_message", bgp(3, b"\x01\x02\x00\x13"))
    for sub in (0, 1, 2):  # RFC 7313 §3.2: refresh, BoRR, EoRR
        c.add("bgp_message", bgp(5, b"\x00\x01" + bytes([sub, 1])))
    # An End-of-RIB marker for IPv4 (RFC 4724 §2) and one for IPv6.
    c.add("bgp_message", bgp(2, b"\x00\x00\x00\x00"))
    c.add("bgp_message", bgp(2, b"\x00\x00\x00\x06\x80\x0f\x03\x00\x02\x01"))
    for ctx in (0x00, 0x03):
        c.add("decode_update", bytes([ctx]) + b"\x00\x00\x00\x00")
        c.add("decode_update", bytes([ctx]) + b"\x00\x00\x00\x06\x80\x0f\x03\x00\x02\x01")
    # One value per attribute type bgp-wire knows, plus an unknown one, so
    # bgp_attr_single starts with every decoder reachable (ctx byte 1:
    # 4-octet AS; 0: 2-octet).
    singles = [
        (0x40, 1, b"\x00"),  # ORIGIN
        (0x40, 2, b"\x02\x02\x00\x00\xfd\xe8\x00\x01\x00\x00"),  # AS_PATH
        (0x40, 3, b"\xc0\x00\x02\x01"),  # NEXT_HOP
        (0x80, 4, b"\x00\x00\x00\x64"),  # MULTI_EXIT_DISC
        (0x40, 5, b"\x00\x00\x00\x64"),  # LOCAL_PREF
        (0x40, 6, b""),  # ATOMIC_AGGREGATE
        (0xC0, 7, b"\x00\x00\xfd\xe8\xc0\x00\x02\x01"),  # AGGREGATOR
        (0xC0, 8, b"\xfd\xe8\x00\x01\xff\xff\xff\x01"),  # COMMUNITIES
        (0x80, 9, b"\xc0\x00\x02\x01"),  # ORIGINATOR_ID
        (0x80, 10, b"\xc0\x00\x02\x01\xc0\x00\x02\x02"),  # CLUSTER_LIST
        (0x80, 14, b"\x00\x02\x01\x10" + b"\x20\x01\x0d\xb8" + b"\x00" * 12 + b"\x00\x20\x20\x01\x0d\xb8"),  # MP_REACH
        (0x80, 15, b"\x00\x01\x01\x18\xc0\x00\x02"),  # MP_UNREACH
        (0xC0, 16, b"\x00\x02\xfd\xe8\x00\x00\x00\x01"),  # EXTENDED_COMMUNITIES
        (0xC0, 17, b"\x02\x01\x00\x01\x00\x00"),  # AS4_PATH
        (0xC0, 18, b"\x00\x01\x00\x00\xc0\x00\x02\x01"),  # AS4_AGGREGATOR
        (0xC0, 25, b"\x00\x02" + b"\x20\x01\x0d\xb8" + b"\x00" * 12 + b"\x00\x01"),  # IPV6_EXT_COMM
        (0xC0, 32, b"\x00\x01\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02"),  # LARGE_COMMUNITY
        (0xC0, 35, b"\x00\x00\xfd\xe8"),  # ONLY_TO_CUSTOMER
        (0xC0, 99, b"\x01\x02\x03"),  # unknown optional transitive
    ]
    for flags, t, v in singles:
        for ctx in (0, 1):
            c.add("bgp_attr_single", bytes([ctx, t, flags]) + v)
            c.add("bgp_attributes", bytes([ctx, flags, t, len(v)]) + v)


def main():
    data_dir, out = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
    c = Corpus(out)
    handmade(c)
    for name in UPDATE_FILES + RIB_FILES:
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            print(f"gen_corpus: missing {path}, skipped", file=sys.stderr)
            continue
        window = []
        for typ, sub, raw, payload in records(path, limit):
            window.append(raw)
            if len(window) == 4:
                for t in ("mrt_records", "mrt_dump", "replay_mrt_input"):
                    c.add(t, b"".join(window), ("run", typ, sub))
                window = []
            for t in ("mrt_records", "mrt_dump"):
                c.add(t, raw, (typ, sub, len(raw) // 512))
            if typ not in (16, 17):
                continue
            got = bgp4mp_message(sub, payload)
            if got is None:
                continue
            msg, as4, addpath = got
            ctx = (1 if as4 else 0) | (2 if addpath else 0)
            parts = split_update(msg)
            if parts is None:
                c.add("bgp_message", msg, (msg[18:19], len(msg) // 64))
                continue
            withdrawn, attrs, nlri = parts
            # As a session would see it: eBGP (collectors peer externally),
            # ADD-PATH on all four families for the ADD-PATH subtypes.
            upd_ctx = (1 if as4 else 0) | 2 | (0xF0 if addpath else 0)
            codes = tuple(t for _f, t, _v in attributes(attrs))
            c.add("decode_update", bytes([upd_ctx]) + msg[19:], (codes, bool(withdrawn), bool(nlri)))
            c.add("bgp_message", msg, (codes, bool(withdrawn), bool(nlri)))
            c.add("bgp_attributes", bytes([ctx]) + attrs, codes)
            for flags, t, v in attributes(attrs):
                c.add("bgp_attr_single", bytes([ctx, t, flags]) + v, (t, len(v) // 16))
                if t in (14, 15):
                    mp = mp_nlri(v, t == 14)
                    if mp is not None and mp[1]:
                        sel = 1 if mp[0] == 2 else 0
                        c.add("bgp_nlri", bytes([sel]) + mp[1], (sel, len(mp[1]) // 8))
                        ap = add_path_ids(mp[1], 1)
                        if ap is not None:
                            c.add("bgp_nlri_addpath", bytes([sel]) + ap, (sel, len(ap) // 8))
            for field in (withdrawn, nlri):
                if field:
                    c.add("bgp_nlri", b"\x00" + field, (0, len(field) // 8))
                    ap = add_path_ids(field, 7)
                    if ap is not None:
                        c.add("bgp_nlri_addpath", b"\x00" + ap, (0, len(ap) // 8))
    for t in sorted(c.count):
        print(f"gen_corpus: {t}: {c.count[t]} seeds")


if __name__ == "__main__":
    main()
