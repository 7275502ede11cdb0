function f(a: any[][], b?: any[][]): any[][] { return [a, b] as any } return f(1 as any)
