// Kernel+user CPU of one small file answer on a loopback TCP socket: head (139 B) + 21,324-byte
// file, sent as (A) sendmsg(head, MSG_MORE) + sendfile, (B) pread + one sendmsg(head+body),
// (C) = B plus an fstat, (D) = A plus fstat. A child process drains the socket.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_utime.tv_usec/1e6+r.ru_stime.tv_sec+r.ru_stime.tv_usec/1e6;}
int main(int argc,char**argv){
  const char*path=argv[1]; int mode=atoi(argv[2]); int n=atoi(argv[3]);
  int ls=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a={0}; a.sin_family=AF_INET; a.sin_addr.s_addr=htonl(0x7f000001);
  bind(ls,(void*)&a,sizeof a); listen(ls,1); socklen_t l=sizeof a; getsockname(ls,(void*)&a,&l);
  pid_t c=fork();
  if(c==0){int s=socket(AF_INET,SOCK_STREAM,0);connect(s,(void*)&a,sizeof a);static char b[1<<20];while(read(s,b,sizeof b)>0);_exit(0);}
  int s=accept(ls,0,0); int one=1; setsockopt(s,IPPROTO_TCP,TCP_NODELAY,&one,4);
  int fd=open(path,O_RDONLY); struct stat st; fstat(fd,&st); size_t size=st.st_size;
  char head[139]; memset(head,'h',sizeof head); static char body[1<<16];
  double t0=cpu();
  for(int i=0;i<n;i++){
    if(mode>=2){fstat(fd,&st);}
    if(mode==0||mode==2){struct iovec v={head,sizeof head};struct msghdr m={0};m.msg_iov=&v;m.msg_iovlen=1;
      sendmsg(s,&m,MSG_MORE|MSG_NOSIGNAL); off_t o=0; size_t left=size; while(left){ssize_t k=sendfile(s,fd,&o,left); if(k<=0){perror("sf");exit(1);} left-=k;}}
    else {ssize_t k=pread(fd,body,size,0); if(k!=(ssize_t)size){perror("pread");exit(1);}
      struct iovec v[2]={{head,sizeof head},{body,size}};struct msghdr m={0};m.msg_iov=v;m.msg_iovlen=2;
      size_t tot=sizeof head+size; while(tot){ssize_t w=sendmsg(s,&m,MSG_NOSIGNAL); if(w<=0){perror("sm");exit(1);} tot-=w; /* crude: assume full */ if(tot){ /*advance*/ size_t adv=w; while(adv){ if(adv>=m.msg_iov[0].iov_len){adv-=m.msg_iov[0].iov_len;m.msg_iov++;m.msg_iovlen--;} else {m.msg_iov[0].iov_base=(char*)m.msg_iov[0].iov_base+adv;m.msg_iov[0].iov_len-=adv;adv=0;}}}}}
  }
  double t1=cpu(); shutdown(s,SHUT_WR); int stt; waitpid(c,&stt,0);
  struct rusage rc; getrusage(RUSAGE_CHILDREN,&rc);
  printf("mode %d: sender %.2f us/answer, receiver %.2f us/answer\n",mode,(t1-t0)/n*1e6,(rc.ru_utime.tv_sec+rc.ru_utime.tv_usec/1e6+rc.ru_stime.tv_sec+rc.ru_stime.tv_usec/1e6)/n*1e6);
}
