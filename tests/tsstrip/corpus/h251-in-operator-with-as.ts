const o = { k: 1 }; return "k" in (o as object)
