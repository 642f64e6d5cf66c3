// Stores VALUE as the element of slot A.
st{{A}}(o{{A}} + j * step{{A}}, {{VALUE}});
