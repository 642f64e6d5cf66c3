// ... plus the row's coordinates along the row dims from the last to the second (TERMS: dim_term
// lines) ...
    for (var d = P(2u) - 1u; d > 0u; d--) {
        let extent = P(4u + d);
        let i = rem % extent;
        rem = rem / extent;
{{TERMS}}
    }
