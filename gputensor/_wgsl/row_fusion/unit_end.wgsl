// After the unit's elements: WORD (a whole word or vector store) under COND.
        if ({{COND}}) { {{WORD}} }
