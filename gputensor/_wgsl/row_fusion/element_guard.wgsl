// Work on the element under GUARD.
            if ({{GUARD}}) {
{{BODY}}
            }
