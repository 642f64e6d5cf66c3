// Work on a unit that lies inside the row.
        if (u * {{L}}u < n) {
{{BODY}}
        }
