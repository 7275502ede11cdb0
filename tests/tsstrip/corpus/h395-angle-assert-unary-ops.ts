const x: any = "5", y: any = 2; return [typeof <string>x, -<number>y, !<boolean>y, ~<number>y, void <any>x]
