type Ünï = "é" | "ü"; const x: Ünï = "é"; return x
