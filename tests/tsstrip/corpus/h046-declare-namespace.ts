declare namespace N { const a: number; function f(): void; namespace Inner { let b: string } }
return 3
