const x: any = 1; return x!!
