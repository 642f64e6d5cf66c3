// The scalar modes: offsets(i), every array operand's element index for linear index i (a struct,
// so it stays in registers; MEMBERS: offset_member list, BODY: the offset_* lines), and ELEMENT.
struct Offsets { {{MEMBERS}} }

fn offsets(i: u32) -> Offsets {
{{BODY}}
}

{{ELEMENT}}
