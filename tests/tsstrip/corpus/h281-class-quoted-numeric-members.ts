class A { "quoted"?: number = 1; 42: string = "n"; [Symbol.iterator]?(): void } const a: any = new A(); return [a.quoted, a[42]]
