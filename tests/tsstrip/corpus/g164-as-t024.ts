return (7 as import("./mod").T<string>) as any
