const s: string = "/* not a comment */"; return s
