// Element E of the unit (j its index in the row).
        { let j = u * {{L}}u + {{E}}u;
{{BODY}}
        }
