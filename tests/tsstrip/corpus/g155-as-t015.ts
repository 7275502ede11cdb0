return (7 as ReturnType<typeof parseInt>) as any
