// The subgroup builtins count_values' main takes with subgroups (after its other arguments).
,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_invocation_id) lane: u32
