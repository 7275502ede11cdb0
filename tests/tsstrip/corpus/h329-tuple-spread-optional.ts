type T<A extends any[], U> = [...A, U?]; return "t"
