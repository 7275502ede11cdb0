const x = "5" as unknown as number; return x
