const t: any = (s: any) => "T"; return t!`x`
