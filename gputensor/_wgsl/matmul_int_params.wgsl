// The parameters and bindings of the integer matmul kernels (matmul_int.wgsl, matmul_int_emul.wgsl;
// packed by ops_matmul_int.py), pulled in with `//#include matmul_int_params`.
alias acc_t = {{ACC}};

struct Params {
    m: u32,
    n: u32,
    k: u32,
    a_first: u32,
    a_rs: u32,      // stride of i (rows of A), u32 bits of a signed element stride
    a_cs: u32,      // stride of p
    a_bs: u32,      // stride of q (batch)
    b_first: u32,
    b_rs: u32,      // stride of p (rows of B)
    b_cs: u32,      // stride of j
    b_bs: u32,
    c_first: u32,
    c_rs: u32,      // stride of i
    c_cs: u32,      // stride of j
    c_bs: u32,
    tiles_m: u32,
    tiles_n: u32,
    accumulate: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> A: array<{{A_ARRAY}}>;
@group(0) @binding(2) var<storage, read> B: array<{{B_ARRAY}}>;
@group(0) @binding(3) var<storage, read_write> C: array<acc_t>;
