interface C { <T>(x: T): T; new <U>(y: U): object; readonly [k: string]: any } return 0
