// Per unit of L elements of the lane (u the unit's index).
    for (var u = t; u * {{L}}u < n; u += TPR) {
{{BODY}}
    }
