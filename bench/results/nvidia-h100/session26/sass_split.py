"""cuobjdump -sass text -> one line per function: md5 of its instructions (addresses stripped). argv: sass.txt"""
import hashlib, re, sys
cur, body = None, []
def out():
    if cur: print(hashlib.md5("\n".join(body).encode()).hexdigest()[:12], len(body), cur)
for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        out(); cur, body = m.group(1), []
    elif cur and re.search(r"/\*[0-9a-f]{4,}\*/", line):
        body.append(re.sub(r"/\*[0-9a-f]+\*/", "", line).split(";")[0].strip())
out()
