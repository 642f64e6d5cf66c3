// An elementwise function of the row kernel (a statistic's, a hoisted part's or the output's):
// NAME(PARAMS) -> TYPE, the fused DAG's LETS then EXPR.
fn {{NAME}}({{PARAMS}}) -> {{TYPE}} {
{{LETS}}    return {{EXPR}};
}
