const a: any = 2, b: any = 3; return <number>a + <number>b * 2
