const a: any = 1; return (a as any)!
