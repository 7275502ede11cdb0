const v: any = { w: 3 }; return (<any>(<unknown>v)).w
