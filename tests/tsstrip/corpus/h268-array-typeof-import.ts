let x: Array<typeof import("./a")> = []; return x
