// Stores VALUE once per row into slot A (one element per row).
    if (live && t == 0u) { st{{A}}(o{{A}}, {{VALUE}}); }
