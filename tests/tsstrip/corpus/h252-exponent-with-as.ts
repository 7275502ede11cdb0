const a = 2; return (a as number) ** 3
