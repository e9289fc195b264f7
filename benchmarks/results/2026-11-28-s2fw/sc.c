#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int c,char**v){int fd=open(v[1],O_RDONLY);struct stat st;int n=1000000;double t0=now();
for(int i=0;i<n;i++)fstat(fd,&st);double t1=now();for(int i=0;i<n;i++)lseek(fd,0,SEEK_CUR);double t2=now();
for(int i=0;i<n;i++){int d=fcntl(fd,F_DUPFD_CLOEXEC,0);close(d);}double t3=now();
printf("fstat %.0f ns, lseek %.0f ns, dup+close %.0f ns\n",(t1-t0)/n*1e9,(t2-t1)/n*1e9,(t3-t2)/n*1e9);}
