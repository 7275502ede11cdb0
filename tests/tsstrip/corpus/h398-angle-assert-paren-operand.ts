const y: any = 4; return <number>(y) * 2
