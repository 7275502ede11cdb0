function a(x: any) { return "call" } const b = 2, c = 3; return [a < b, c > (4)]
