const s: string = "a\"b\\c\nd"; return s.length
