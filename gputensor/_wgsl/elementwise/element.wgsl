// element(PARAMS) -> TYPE: loads and converts the operands and evaluates the expression (BODY:
// operand lines, a fused DAG's lets, the return line).
fn element({{PARAMS}}) -> {{TYPE}} {
{{BODY}}
}
