import csv,sys,collections
rows=list(csv.reader(open('source_sass.csv')))
blocks=[];cur=None
for r in rows:
    if r and r[0]=='Kernel Name': cur={'name':r[1],'rows':[]};blocks.append(cur);continue
    if r and r[0]=='Address': cur['hdr']=r;continue
    if cur and len(r)>5: cur['rows'].append(r)
for bi in (0,2):
    b=blocks[bi];h=b['hdr'];ix={k:i for i,k in enumerate(h)}
    print('=====',b['name'][-40:],len(b['rows']))
    def v(r,k):
        try: return float(r[ix[k]])
        except: return 0.0
    tot=sum(v(r,'Warp Stall Sampling (All Samples)') for r in b['rows'])
    stalls=[k for k in h if k.startswith('stall_') and 'Not Issued' not in k]
    s={k:sum(v(r,k) for r in b['rows']) for k in stalls}
    print('total samples',tot)
    for k,x in sorted(s.items(),key=lambda t:-t[1])[:10]: print(f'  {k:28s} {x:8.0f} {100*x/tot:5.1f}%')
    # by opcode
    op=collections.Counter(); opn=collections.Counter()
    for r in b['rows']:
        o=r[ix['Source']].split()
        o=[t for t in o if not t.startswith('@')]
        o=o[0].split('.')[0] if o else '?'
        op[o]+=v(r,'Warp Stall Sampling (All Samples)'); opn[o]+=v(r,'Instructions Executed')
    print(' by opcode (samples, executed):')
    for k,x in op.most_common(14): print(f'  {k:10s} {x:8.0f} {100*x/tot:5.1f}%  exec {opn[k]:.0f}')
    print(' top instructions:')
    top=sorted(b['rows'],key=lambda r:-v(r,'Warp Stall Sampling (All Samples)'))[:25]
    for r in top:
        top3=sorted(((v(r,k),k) for k in stalls),reverse=True)[:2]
        print(f"  {r[0][-5:]} {r[ix['Source']].strip()[:60]:60s} {v(r,'Warp Stall Sampling (All Samples)'):6.0f} {top3}")
    ex=[(v(r,'L1 Wavefronts Shared Excessive'),r[0][-5:],r[ix['Source']].strip()[:60],v(r,'L1 Wavefronts Shared'),v(r,'L1 Wavefronts Shared Ideal')) for r in b['rows']]
    print(' shared excessive:')
    for e in sorted(ex,reverse=True)[:8]:
        if e[0]>0: print('  ',e)
    ex=[(v(r,'L2 Theoretical Sectors Global Excessive'),r[0][-5:],r[ix['Source']].strip()[:60],v(r,'L2 Theoretical Sectors Global')) for r in b['rows']]
    print(' global excessive:')
    for e in sorted(ex,reverse=True)[:6]:
        if e[0]>0: print('  ',e)
