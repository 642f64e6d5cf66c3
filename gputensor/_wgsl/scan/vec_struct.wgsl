// vec_t: four accumulators as a struct (emulated 64-bit integers are structs themselves).
struct vec_t { x: acc_t, y: acc_t, z: acc_t, w: acc_t }
