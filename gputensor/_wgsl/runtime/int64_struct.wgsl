// The emulated 64-bit integer type NAME (i64e or u64e) as two 32-bit words, low first (int64_emul.wgsl;
// a kernel that names it and does not declare it gets it appended by kernels.with_helpers).
struct {{NAME}} { lo: u32, hi: u32 }
