// A float32 output's vector of the unit.
var wv = vec4<f32>();
