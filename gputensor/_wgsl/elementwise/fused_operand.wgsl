// A node's operand I converted to the node's cast type (VALUE), in a fused DAG's lets.
    let a{{J}}_{{I}} = {{VALUE}};
