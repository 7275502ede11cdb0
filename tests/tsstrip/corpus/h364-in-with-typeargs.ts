const o = new Map<string, number>(); return "size" in o
