// The workspace global reads a file of the directory as text.
return await workspace.readFile('docs/policy.md');
