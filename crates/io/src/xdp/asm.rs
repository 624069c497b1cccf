//! A small eBPF instruction builder with forward labels, enough for the
//! XDP programs of this crate.
//!
//! Why our own: the maintained ways to get eBPF bytecode are clang (or
//! gcc-bpf) plus libbpf, or `aya` with a clang/`bpf-linker` build step;
//! the build must not depend on either, and there is no maintained
//! pure-Rust eBPF assembler on crates.io (the `rbpf` crate's assembler
//! targets its own userspace VM and is not meant for programs loaded
//! into the kernel). The encoding is the fixed 8-byte `struct bpf_insn`
//! (Documentation/bpf/standardization/instruction-set.rst); the kernel's
//! verifier checks every program we build, so a mistake here fails the
//! load, it does not run.

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    pub code: u8,
    /// dst in the low nibble, src in the high nibble.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

pub(crate) const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
}

// Instruction classes.
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const JMP32: u8 = 0x06;
const ALU64: u8 = 0x07;
// Modes and sources.
const MEM: u8 = 0x60;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;
const BPF_PSEUDO_MAP_FD: u8 = 1;

/// Access sizes of loads and stores.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    const fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// 64-bit ALU operations.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    /// Unsigned modulo (a zero divisor leaves `dst` unchanged).
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
}

/// Conditional jumps (unsigned comparisons).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ne = 0x50,
    Le = 0xb0,
    Ge = 0x30,
}

/// A jump target, bound once with [`Asm::bind`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct Label(usize);

/// Why a program could not be assembled (a bug in the program text).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum AsmError {
    /// A label was used but never bound.
    Unbound,
    /// A jump is farther than an `i16` offset reaches.
    TooFar,
}

/// The builder: instructions in order, jumps patched by [`Asm::finish`].
#[derive(Default)]
pub(crate) struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `l` to the next instruction.
    pub fn bind(&mut self, l: Label) {
        if let Some(s) = self.labels.get_mut(l.0) {
            *s = Some(self.insns.len());
        }
    }

    fn push(&mut self, i: Insn) -> &mut Self {
        self.insns.push(i);
        self
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.alu_imm(Alu::Mov, dst, imm)
    }
    /// `dst = src`.
    pub fn mov(&mut self, dst: u8, src: u8) -> &mut Self {
        self.alu(Alu::Mov, dst, src)
    }
    /// `dst op= imm` on 64 bits.
    pub fn alu_imm(&mut self, op: Alu, dst: u8, imm: i32) -> &mut Self {
        self.push(insn(ALU64 | op as u8 | K, dst, 0, 0, imm))
    }
    /// `dst op= src` on 64 bits.
    pub fn alu(&mut self, op: Alu, dst: u8, src: u8) -> &mut Self {
        self.push(insn(ALU64 | op as u8 | X, dst, src, 0, 0))
    }
    /// `dst = *(size *)(src + off)` (zero-extended).
    pub fn ldx(&mut self, sz: Size, dst: u8, src: u8, off: i16) -> &mut Self {
        self.push(insn(LDX | MEM | sz.bits(), dst, src, off, 0))
    }
    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, sz: Size, dst: u8, off: i16, src: u8) -> &mut Self {
        self.push(insn(STX | MEM | sz.bits(), dst, src, off, 0))
    }
    /// `*(size *)(dst + off) = imm`.
    pub fn st(&mut self, sz: Size, dst: u8, off: i16, imm: i32) -> &mut Self {
        self.push(insn(ST | MEM | sz.bits(), dst, 0, off, imm))
    }
    /// `dst = imm` for a full 64-bit immediate (the two-slot `ld_imm64`).
    pub fn ld_imm64(&mut self, dst: u8, imm: u64) -> &mut Self {
        self.push(insn(
            LD | IMM | Size::DW.bits(),
            dst,
            0,
            0,
            imm as u32 as i32,
        ));
        self.push(insn(0, 0, 0, 0, (imm >> 32) as u32 as i32))
    }
    /// `dst = htobe(dst)` on `bits` (16, 32 or 64) bits, the upper bits
    /// cleared: a byte swap on the little-endian hosts we run on.
    pub fn be(&mut self, dst: u8, bits: i32) -> &mut Self {
        // BPF_ALU | BPF_END | BPF_TO_BE
        self.push(insn(ALU | 0xd0 | 0x08, dst, 0, 0, bits))
    }
    /// `dst = map` (the two-slot `ld_imm64` the kernel patches with the
    /// map's address).
    pub fn ld_map(&mut self, dst: u8, map_fd: i32) -> &mut Self {
        self.push(insn(
            LD | IMM | Size::DW.bits(),
            dst,
            BPF_PSEUDO_MAP_FD,
            0,
            map_fd,
        ));
        self.push(insn(0, 0, 0, 0, 0))
    }
    /// `if (u32)dst cond (u32)imm goto l` (a JMP32 comparison, so that
    /// immediates with the top bit set compare as the unsigned 32-bit
    /// values they spell).
    pub fn jmp32_imm(&mut self, c: Cond, dst: u8, imm: i32, l: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), l));
        self.push(insn(JMP32 | c as u8 | K, dst, 0, 0, imm))
    }
    /// `if dst cond imm goto l` on 64 bits.
    pub fn jmp_imm(&mut self, c: Cond, dst: u8, imm: i32, l: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), l));
        self.push(insn(JMP | c as u8 | K, dst, 0, 0, imm))
    }
    /// `if dst cond src goto l` on 64 bits.
    pub fn jmp(&mut self, c: Cond, dst: u8, src: u8, l: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), l));
        self.push(insn(JMP | c as u8 | X, dst, src, 0, 0))
    }
    /// `goto l`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn ja(&mut self, l: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), l));
        self.push(insn(JMP, 0, 0, 0, 0))
    }
    /// Calls helper number `f` (arguments in r1-r5, result in r0).
    pub fn call(&mut self, f: i32) -> &mut Self {
        self.push(insn(JMP | 0x80, 0, 0, 0, f))
    }
    /// Returns r0.
    pub fn exit(&mut self) -> &mut Self {
        self.push(insn(JMP | 0x90, 0, 0, 0, 0))
    }

    /// The program with every jump offset patched.
    pub fn finish(mut self) -> Result<Vec<Insn>, AsmError> {
        for (at, l) in std::mem::take(&mut self.fixups) {
            let target = self
                .labels
                .get(l.0)
                .copied()
                .flatten()
                .ok_or(AsmError::Unbound)?;
            let off = target as i64 - at as i64 - 1;
            let off = i16::try_from(off).map_err(|_| AsmError::TooFar)?;
            if let Some(i) = self.insns.get_mut(at) {
                i.off = off;
            }
        }
        Ok(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings checked against the kernel's own macros
    /// (include/linux/filter.h: BPF_MOV64_IMM, BPF_LDX_MEM, BPF_JMP32_IMM,
    /// BPF_LD_MAP_FD, BPF_EXIT_INSN) and jump offsets relative to the next
    /// instruction, forwards and backwards.
    #[test]
    fn encodes_like_the_kernel_macros() {
        let mut a = Asm::new();
        let back = a.label();
        let fwd = a.label();
        a.bind(back);
        a.mov_imm(0, 2); // 0: b7 00 .. imm 2
        a.ldx(Size::W, 2, 1, 16); // 1: 61 12 off 16
        a.jmp32_imm(Cond::Ne, 2, 0x0008, fwd); // 2: 56 02 off 3
        a.ld_map(1, 7); // 3,4: 18 11 imm 7, then zero
        a.jmp(Cond::Gt, 2, 3, back); // 5: 2d 32 off -6
        a.bind(fwd);
        a.exit(); // 6: 95
        let p = a.finish().unwrap();
        assert_eq!(p[0], insn(0xb7, 0, 0, 0, 2));
        assert_eq!(p[1], insn(0x61, 2, 1, 16, 0));
        assert_eq!(p[2], insn(0x56, 2, 0, 3, 0x0008));
        assert_eq!(p[3].code, 0x18);
        assert_eq!(p[3].regs, 0x11);
        assert_eq!(p[3].imm, 7);
        assert_eq!(p[4], insn(0, 0, 0, 0, 0));
        assert_eq!(p[5], insn(0x2d, 2, 3, -6, 0));
        assert_eq!(p[6], insn(0x95, 0, 0, 0, 0));
    }

    /// The 64-bit immediate load, the byte swap and the multiply/modulo
    /// opcodes (BPF_LD_IMM64, BPF_ENDIAN(BPF_TO_BE), BPF_ALU64_REG(BPF_MUL),
    /// BPF_ALU64_REG(BPF_MOD)).
    #[test]
    fn wide_immediates_swaps_and_arithmetic() {
        let mut a = Asm::new();
        a.ld_imm64(3, 0x9e37_79b9_7f4a_7c15);
        a.be(2, 64);
        a.alu(Alu::Mul, 2, 3);
        a.alu(Alu::Mod, 2, 4);
        let p = a.finish().unwrap();
        assert_eq!(p[0], insn(0x18, 3, 0, 0, 0x7f4a_7c15));
        assert_eq!(p[1], insn(0, 0, 0, 0, 0x9e37_79b9_u32 as i32));
        assert_eq!(p[2], insn(0xdc, 2, 0, 0, 64));
        assert_eq!(p[3], insn(0x2f, 2, 3, 0, 0));
        assert_eq!(p[4], insn(0x9f, 2, 4, 0, 0));
    }

    #[test]
    fn unbound_labels_are_errors() {
        let mut a = Asm::new();
        let l = a.label();
        a.ja(l);
        assert_eq!(a.finish(), Err(AsmError::Unbound));
    }
}
