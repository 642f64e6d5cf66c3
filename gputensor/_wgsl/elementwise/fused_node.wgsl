// Node J's value in a fused DAG's lets (VALUE: its op expression over its operands, converted
// and rounded as storing it would).
    let t{{J}} = {{VALUE}};
