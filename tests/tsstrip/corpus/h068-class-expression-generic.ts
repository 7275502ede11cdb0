const K = class<T> { v?: T; set(v: T): this { this.v = v; return this } }; return new K<number>().set(3).v
