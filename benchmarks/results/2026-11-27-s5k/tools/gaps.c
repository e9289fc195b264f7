// busy loop reading CLOCK_MONOTONIC; sums gaps > 20us; reports involuntary switches
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int c,char**v){double dur=c>1?atof(v[1]):2.0;double t0=now(),last=t0,gap=0;long ng=0,nbig=0;
 volatile unsigned long x=0; unsigned long iters=0;
 while(1){for(int i=0;i<1000;i++)x+=i; iters++; double t=now(); double d=t-last; if(d>20e-6){gap+=d;ng++; if(d>1e-3)nbig++;} last=t; if(t-t0>dur)break;}
 struct rusage r;getrusage(RUSAGE_SELF,&r);
 double wall=now()-t0, cpu=r.ru_utime.tv_sec+r.ru_utime.tv_usec*1e-6+r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;
 printf("wall %.3f cpu %.3f gaps %ld (>1ms %ld) gap_s %.3f (%.1f%%) nivcsw %ld nvcsw %ld Mloops/s-of-cpu %.2f\n",wall,cpu,ng,nbig,gap,100*gap/wall,r.ru_nivcsw,r.ru_nvcsw,iters/1e6/(wall-gap));}
