//! A minimal classic-libpcap writer for tests: one IPv4 TCP connection on
//! port 179 carrying BGP messages, so that third-party dissectors (tshark)
//! can check what our encoder produced.
//!
//! Format references:
//! - libpcap file format: 24-octet global header (magic 0xa1b2c3d4,
//!   version 2.4, LINKTYPE_ETHERNET = 1), then a 16-octet record header
//!   per packet.
//! - IPv4 header checksum: RFC 791 §3.1 (one's complement of the one's
//!   complement sum of the header's 16-bit words).
//! - TCP checksum: RFC 793 §3.1 (same sum over a pseudo-header of source,
//!   destination, zero, protocol 6 and TCP length, then the TCP segment).
//!
//! The connection starts with a SYN / SYN-ACK / ACK handshake so that tshark
//! sees a proper stream and knows where the byte stream begins.

#![allow(dead_code)] // Each test binary uses a different subset.

/// Ethernet + IPv4 (no options) + TCP (no options).
const ETH_LEN: usize = 14;
const IP_LEN: usize = 20;
const TCP_LEN: usize = 20;
/// Largest TCP payload we put in one frame: the IPv4 total length is a
/// 16-bit field.
pub const MAX_SEGMENT: usize = 65535 - IP_LEN - TCP_LEN;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// One TCP endpoint's view: address, port and next sequence number.
#[derive(Clone, Copy, Debug)]
struct End {
    mac: [u8; 6],
    ip: [u8; 4],
    port: u16,
    seq: u32,
}

/// Builds a pcap file in memory holding one TCP connection from a client
/// (ephemeral port) to a BGP speaker on port 179.
pub struct BgpPcap {
    out: Vec<u8>,
    client: End,
    server: End,
    /// Capture timestamp of the next frame, in microseconds.
    ts_us: u64,
    ip_id: u16,
    frames: usize,
}

impl Default for BgpPcap {
    fn default() -> Self {
        Self::new()
    }
}

impl BgpPcap {
    /// Starts a capture: global header plus the three-way handshake between
    /// 192.0.2.1:50179 and 192.0.2.2:179 (RFC 5737 documentation addresses).
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(1 << 16);
        out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // magic, µs timestamps
        out.extend_from_slice(&2u16.to_le_bytes()); // version major
        out.extend_from_slice(&4u16.to_le_bytes()); // version minor
        out.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        out.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        out.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
        out.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
        let mut p = BgpPcap {
            out,
            client: End {
                mac: [0x02, 0, 0, 0, 0, 1],
                ip: [192, 0, 2, 1],
                port: 50179,
                seq: 0x1000_0000,
            },
            server: End {
                mac: [0x02, 0, 0, 0, 0, 2],
                ip: [192, 0, 2, 2],
                port: 179,
                seq: 0x2000_0000,
            },
            ts_us: 1_546_300_800_000_000, // 2019-01-01T00:00:00Z
            ip_id: 1,
            frames: 0,
        };
        // SYN and SYN-ACK each consume one sequence number (RFC 793 §3.3).
        p.frame(true, TCP_SYN, &[]);
        p.client.seq = p.client.seq.wrapping_add(1);
        p.frame(false, TCP_SYN | TCP_ACK, &[]);
        p.server.seq = p.server.seq.wrapping_add(1);
        p.frame(true, TCP_ACK, &[]);
        p
    }

    /// Sends `payload` from the client to port 179 as one or more segments
    /// (split only when it exceeds [`MAX_SEGMENT`]), each acknowledged by
    /// the server.
    pub fn send(&mut self, payload: &[u8]) {
        for chunk in payload.chunks(MAX_SEGMENT) {
            self.frame(true, TCP_PSH | TCP_ACK, chunk);
            self.client.seq = self.client.seq.wrapping_add(chunk.len() as u32);
            self.frame(false, TCP_ACK, &[]);
        }
    }

    /// Sends `payload` from the BGP speaker (port 179) to the client.
    pub fn reply(&mut self, payload: &[u8]) {
        for chunk in payload.chunks(MAX_SEGMENT) {
            self.frame(false, TCP_PSH | TCP_ACK, chunk);
            self.server.seq = self.server.seq.wrapping_add(chunk.len() as u32);
            self.frame(true, TCP_ACK, &[]);
        }
    }

    /// Sends whole messages, packing consecutive ones into a segment while
    /// the segment stays within `max_segment` octets. A message longer than
    /// that goes alone in its own segment. Returns the number of segments.
    pub fn send_messages<M: AsRef<[u8]>>(&mut self, msgs: &[M], max_segment: usize) -> usize {
        let max_segment = max_segment.clamp(1, MAX_SEGMENT);
        let mut seg: Vec<u8> = Vec::with_capacity(max_segment);
        let mut n = 0;
        for m in msgs {
            let m = m.as_ref();
            if !seg.is_empty() && seg.len() + m.len() > max_segment {
                self.send(&seg);
                n += 1;
                seg.clear();
            }
            seg.extend_from_slice(m);
        }
        if !seg.is_empty() {
            self.send(&seg);
            n += 1;
        }
        n
    }

    /// Number of frames written so far (handshake included).
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Closes the connection with FIN/ACK from both sides and returns the file.
    pub fn finish(mut self) -> Vec<u8> {
        self.frame(true, TCP_FIN | TCP_ACK, &[]);
        self.client.seq = self.client.seq.wrapping_add(1);
        self.frame(false, TCP_FIN | TCP_ACK, &[]);
        self.server.seq = self.server.seq.wrapping_add(1);
        self.frame(true, TCP_ACK, &[]);
        self.out
    }

    /// Writes one Ethernet/IPv4/TCP frame. `from_client` picks the direction;
    /// the ACK number is always the peer's next sequence number.
    fn frame(&mut self, from_client: bool, flags: u8, payload: &[u8]) {
        assert!(payload.len() <= MAX_SEGMENT, "segment too large");
        let (src, dst) = if from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let total = ETH_LEN + IP_LEN + TCP_LEN + payload.len();
        let mut f = Vec::with_capacity(total);

        // Ethernet II.
        f.extend_from_slice(&dst.mac);
        f.extend_from_slice(&src.mac);
        f.extend_from_slice(&0x0800u16.to_be_bytes());

        // IPv4 header, RFC 791 §3.1. Don't Fragment set, TTL 64, protocol 6.
        let ip_total = (IP_LEN + TCP_LEN + payload.len()) as u16;
        let ip_start = f.len();
        f.push(0x45);
        f.push(0xc0); // DSCP CS6 (network control), as BGP speakers send.
        f.extend_from_slice(&ip_total.to_be_bytes());
        f.extend_from_slice(&self.ip_id.to_be_bytes());
        f.extend_from_slice(&0x4000u16.to_be_bytes());
        f.push(64);
        f.push(6);
        f.extend_from_slice(&[0, 0]); // checksum, filled below
        f.extend_from_slice(&src.ip);
        f.extend_from_slice(&dst.ip);
        let ck = checksum(&[&f[ip_start..ip_start + IP_LEN]]);
        f[ip_start + 10..ip_start + 12].copy_from_slice(&ck.to_be_bytes());
        self.ip_id = self.ip_id.wrapping_add(1);

        // TCP header, RFC 793 §3.1. Data offset 5 words, fixed window.
        let tcp_start = f.len();
        f.extend_from_slice(&src.port.to_be_bytes());
        f.extend_from_slice(&dst.port.to_be_bytes());
        f.extend_from_slice(&src.seq.to_be_bytes());
        let ack = if flags & TCP_ACK != 0 { dst.seq } else { 0 };
        f.extend_from_slice(&ack.to_be_bytes());
        f.push(5 << 4);
        f.push(flags);
        f.extend_from_slice(&65535u16.to_be_bytes());
        f.extend_from_slice(&[0, 0]); // checksum, filled below
        f.extend_from_slice(&[0, 0]); // urgent pointer
        f.extend_from_slice(payload);
        let tcp_len = (TCP_LEN + payload.len()) as u16;
        let mut pseudo = [0u8; 12];
        pseudo[0..4].copy_from_slice(&src.ip);
        pseudo[4..8].copy_from_slice(&dst.ip);
        pseudo[9] = 6;
        pseudo[10..12].copy_from_slice(&tcp_len.to_be_bytes());
        let ck = checksum(&[&pseudo, &f[tcp_start..]]);
        f[tcp_start + 16..tcp_start + 18].copy_from_slice(&ck.to_be_bytes());

        // pcap record header: seconds, microseconds, captured and original length.
        let secs = (self.ts_us / 1_000_000) as u32;
        let usecs = (self.ts_us % 1_000_000) as u32;
        self.out.extend_from_slice(&secs.to_le_bytes());
        self.out.extend_from_slice(&usecs.to_le_bytes());
        self.out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&f);
        self.ts_us += 1000;
        self.frames += 1;
    }
}

/// Internet checksum (RFC 1071) over the concatenation of `parts`. Each part
/// but the last must have even length, which holds for the headers here.
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    for part in parts {
        let mut words = part.chunks_exact(2);
        for w in &mut words {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            sum += u32::from(*last) << 8;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod pcap_tests {
    use super::*;

    /// RFC 1071 §3 worked example: words 0001 f203 f4f5 f6f7 sum to ddf2
    /// (after end-around carry), so the checksum is its complement.
    #[test]
    fn checksum_matches_rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&[&data]), !0xddf2);
    }

    #[test]
    fn frames_verify_and_sequence_numbers_advance() {
        let mut p = BgpPcap::new();
        let n = p.send_messages(&[vec![0xffu8; 19], vec![0xffu8; 23]], 1500);
        assert_eq!(n, 1, "two small messages share one segment");
        p.send(&[1, 2, 3]);
        let file = p.finish();
        // Walk the records; check each IPv4 and TCP checksum verifies to 0.
        let mut off = 24;
        let mut seqs = Vec::new();
        while off < file.len() {
            let caplen = u32::from_le_bytes(file[off + 8..off + 12].try_into().unwrap()) as usize;
            let frame = &file[off + 16..off + 16 + caplen];
            let ip = &frame[ETH_LEN..ETH_LEN + IP_LEN];
            assert_eq!(checksum(&[ip]), 0, "IPv4 header checksum");
            let tcp = &frame[ETH_LEN + IP_LEN..];
            let mut pseudo = [0u8; 12];
            pseudo[0..8].copy_from_slice(&ip[12..20]);
            pseudo[9] = 6;
            pseudo[10..12].copy_from_slice(&(tcp.len() as u16).to_be_bytes());
            assert_eq!(checksum(&[&pseudo, tcp]), 0, "TCP checksum");
            if tcp[0..2] == 50179u16.to_be_bytes() {
                seqs.push(u32::from_be_bytes(tcp[4..8].try_into().unwrap()));
            }
            off += 16 + caplen;
        }
        assert_eq!(off, file.len());
        // SYN, ACK, data(42), data(3), FIN, ACK: seq advances by payload.
        let base = 0x1000_0000u32;
        assert_eq!(
            seqs,
            [base, base + 1, base + 1, base + 43, base + 46, base + 47]
        );
    }
}
