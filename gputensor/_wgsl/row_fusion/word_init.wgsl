// A packed output's word of the unit, built lane by lane.
var w = 0u;
