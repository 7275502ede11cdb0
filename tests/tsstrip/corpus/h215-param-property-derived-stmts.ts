// @refuse: parameter property
// @transform
class A { n = 0 }
class B extends A { log: string[] = []; constructor(private k: number) {
    super();
    this.log.push("k" + this.k);
} }
return new B(4).log
